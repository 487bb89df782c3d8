"""PASS/FAIL lines with counts, for the test scripts of tests/python:

    from checks import Checks
    check = Checks()
    check(ok, "what was checked")        # prints PASS: ... or FAIL: ...
    print(f"...: {check.passed} passed, {check.failures} failed")
"""


class Checks:
    def __init__(self):
        self.passed = 0
        self.failures = 0

    def __call__(self, ok, what):
        print(f"{'PASS' if ok else 'FAIL'}: {what}")
        if ok:
            self.passed += 1
        else:
            self.failures += 1
