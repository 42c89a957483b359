"""The phased-operation frame: one command at a time per operation (a lock, taken over
from a holder that died), the journal of its steps, the phase it reached, and resuming
from there. The ensemble move (zk/), the KRaft conversion (kraft/) and the guided
migration (migration/) supply their phases and steps; the store keeps the rows."""
