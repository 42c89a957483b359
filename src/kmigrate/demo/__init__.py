"""`kmigrate demo`: a whole migration on two local clusters while traffic flows."""
