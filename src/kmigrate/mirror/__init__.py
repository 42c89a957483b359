"""The mirror: copies topics partition for partition, exactly once, recording an exact
offset map. (Issue 3; so far: the offset map.)"""
