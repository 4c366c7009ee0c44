/* check_run.h — the end of every unit suite's main(): run the suite,
 * turn its failures into the exit status the test driver reads. */
#ifndef LFS_CHECK_RUN_H
#define LFS_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

static inline int
check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
