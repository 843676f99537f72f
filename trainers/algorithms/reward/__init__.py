"""Reward models learnt from preference judgements: losses, networks, the ensemble model, its trainer, the
comparison (best-of-N) reward model, the predictor that serves a checkpoint, the scorer that PPO reads, and the
pipeline that collects judgements and trains in parallel processes.
"""
