"""Authorization as a migration must keep it: a probe set chosen from the cluster's own
ACLs (``probes``, pure), asked of the cluster's authorizer without changing anything
(``ask``), and compared before and after each step of a migration. A migration that
would let anyone do what they could not, or refuse what they could, shows here as a
probe whose answer changed."""
