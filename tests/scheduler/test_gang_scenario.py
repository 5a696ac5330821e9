"""The gang scenario through the HTTP API: 125 jobs of 8 pods created at
once on 500 nodes / 63 leaves where one leaf feeds exactly one job, with
kube-scheduler's interleaving (gang_driver.py). Expected: 63 jobs whole on
one leaf each, 62 wholly pending, no uplink over; then the placed jobs are
deleted and 62 of the rest are placed whole."""
import unittest

import gang_driver as gd


@unittest.skipUnless(gd.FAKE, "GANTRY_FAKEAPI not set")
class GangScenarioTest(unittest.TestCase):
    def test_125_jobs_on_63_leaves(self):
        r = gd.issue_scenario()
        self.assertEqual(r["over"], [])
        first, second = r["first"], r["second"]
        self.assertEqual((first["whole"], first["partial"], first["pending"]), (63, 0, 62))
        self.assertEqual(first["max_leaves"], 1)
        self.assertEqual((second["whole"], second["partial"], second["pending"]), (62, 0, 0))
        self.assertEqual(second["max_leaves"], 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
