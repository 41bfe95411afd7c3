"""Learner: outcomes, reviews and feedback become posteriors and quality."""
