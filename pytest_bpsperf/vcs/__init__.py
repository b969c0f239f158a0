"""Git, read and checked out: a tree's commit and state, the commits a bisect walks, the arms' worktrees.

Driver-side plain Python, through the ``git`` command.
"""
