"""The mirror: copies topics partition for partition, exactly once, recording an exact
offset map (its values live in :mod:`kmigrate.model.offsets` and :mod:`kmigrate.model.links`)."""
