"""Optional integrations with training frameworks (each an extra; nothing here is imported by the CLI)."""
