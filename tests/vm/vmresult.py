"""Runs a unittest suite inside the VM and records each test as a step.

Every test's outcome is appended to $VM_RESULTS as "PASS name" or
"FAIL name", which tests/vm/run.sh counts into its "vm: N passed, M
failed" line. Usage, in the guest command:

    python3 -m vmresult test_module [test_module...]
"""
import os
import sys
import unittest


class _StepResult(unittest.TextTestResult):
    def _record(self, test, ok):
        with open(os.environ.get("VM_RESULTS", os.devnull), "a") as f:
            f.write("%s %s\n" % ("PASS" if ok else "FAIL", test.id()))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, False)

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, False)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, False)


def main(names):
    suite = unittest.defaultTestLoader.loadTestsFromNames(names)
    runner = unittest.TextTestRunner(verbosity=2, resultclass=_StepResult, stream=sys.stdout)
    return 0 if runner.run(suite).wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
