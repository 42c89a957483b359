"""Values shared by the store and the domain: plain frozen data, no I/O; imports nothing of kmigrate but errors."""
