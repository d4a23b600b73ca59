"""triage: diagnose failing RL fine-tuning runs of language models."""

__version__ = "0.1.0"
