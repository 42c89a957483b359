"""Developer tools that are not part of kmigrate itself (the documentation site's build)."""
