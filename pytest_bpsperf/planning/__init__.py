"""Where each process of a run goes and with what environment and command (pure data, no Ray).

:mod:`.model` holds the vocabulary every later step uses (nodes, placements,
role plans, plans, the backend protocol and its errors); :mod:`.placement`
chooses the nodes; :mod:`.plan` turns a placement, a backend and a trick into
one role plan per process.
"""
