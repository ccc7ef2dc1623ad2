#!/bin/sh
# The debug adapter VS Code starts: ndbg's DAP server on stdio. Set NDBG to
# the ndbg binary if it is not on PATH.
exec "${NDBG:-ndbg}" dap "$@"
