"""One running gateway instance: the asyncio server (server), the dispatch of requests
to one module per API family over a small state object (state, metadata, produce, fetch,
offsets, groups), the split of partitioned requests by backend broker (split), and the
virtual offsets of moved partitions (virtual)."""
