"""What a run is asked to be: settings, tricks, arms, and the checks made before anything is placed.

The option table and its parsers, the settings of a test, the tricks, the code
each arm of a base-vs-head pair runs, and the checks of the workload that run
before Ray starts. Pure data and local checks: nothing here talks to Ray.
"""
