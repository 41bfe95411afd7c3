"""The learner's admin areas (it owns their tables): learning (quality, quarantine, feedback) and analytics."""

QUEUE = "toolsel-learner-admin"
"""Queue group of the learner's admin handlers: one learner answers each request."""
