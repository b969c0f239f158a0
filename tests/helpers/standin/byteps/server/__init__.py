"""``import byteps.server`` of the stand-in: MXNet's own parameter-server node in place of BytePS's.

BytePS's server only speaks to BytePS's worker core, which needs CUDA; the stand-in's workers
carry their push_pulls over MXNet's ``dist_sync`` kvstore, so the scheduler and the servers are
MXNet's. As with BytePS's own ``import byteps.server``, importing this module runs the ps-lite node
named by ``DMLC_ROLE`` (scheduler or server) until the job ends: MXNet does it when it is imported.
"""

import os
import sys

if os.environ.get("DMLC_ROLE") not in ("scheduler", "server"):
    sys.exit(
        f"byteps stand-in: import byteps.server runs a scheduler or a server, not DMLC_ROLE="
        f"{os.environ.get('DMLC_ROLE')!r}"
    )
import mxnet  # noqa: E402,F401 - its import runs the node (mxnet/kvstore_server.py) and exits
