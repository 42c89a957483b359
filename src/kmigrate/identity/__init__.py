"""What identifies clients and what they may do, moved between clusters with the data:
client quotas (`quotas`: the plan, pure; `quota_copy`: through the admin layer), SCRAM
users (`users`: the plan, pure; `user_copy`: through the admin layer) and principal
remapping (`principals`)."""
