"""The check counter every Python check in Scripts/ shares: one ok/FAIL line per check and the
closing line CI reads ("N passed, M failed")."""


class Checks:
    """Counts named checks and prints the closing line CI reads."""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok   " + name + (f" ({detail})" if detail else ""), flush=True)
        else:
            self.failed += 1
            print("FAIL " + name + (f": {detail}" if detail else ""), flush=True)
        return ok

    def summary(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1
