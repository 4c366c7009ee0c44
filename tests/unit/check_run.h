/* check_run.h — the end of every unit suite: its main() runs one test
 * case of the suite's tests and turns their failures into the exit
 * status the test driver reads. */
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

/* Run `tests` as test case `tcase` of suite `suite`.  `timeout` is about
 * what the slowest takes on a quiet machine; a test is failed as hung
 * only after twenty times that, since under a sanitizer beside other
 * work one takes several times as long (check_region's 30 s expired so,
 * having had 7 s of CPU). */
static inline int
check_main(const char *suite, const char *tcase, int timeout, const TTest *const *tests, size_t n)
{
	Suite *s = suite_create(suite);
	TCase *tc = tcase_create(tcase);
	tcase_set_timeout(tc, 20.0 * timeout);
	for (size_t i = 0; i < n; i++)
		tcase_add_test(tc, tests[i]);
	suite_add_tcase(s, tc);
	return check_run(s);
}

/* A suite's main(): CHECK_MAIN("suite", "tcase", timeout_s, test, ...) */
#define CHECK_MAIN(suite, tcase, timeout, ...)                                                  \
	int main(void)                                                                          \
	{                                                                                       \
		const TTest *const tests_[] = { __VA_ARGS__ };                                  \
		return check_main(suite, tcase, timeout, tests_, sizeof(tests_) / sizeof(tests_[0])); \
	}

#endif
