"""The tests that start no pytest session, one folder per folder of the package (``test_<module>.py``), and project/."""
