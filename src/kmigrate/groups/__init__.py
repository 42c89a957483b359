"""Consumer groups across a migration: exact translation through a link's offset map,
migrate (commit on the target), sync (follow the source), create at a position."""
