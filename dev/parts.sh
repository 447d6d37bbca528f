# Sourced by the dev/ scripts. `part NAME` says on stderr that a part of the calling script
# starts, in seconds since that script began, so that a run's log shows which parts take its
# time (CI stops a run at 90 minutes). A script run by another counts from its own start.
part() { echo "== [${SECONDS} s] dev/$(basename "$0"): $*" >&2; }
