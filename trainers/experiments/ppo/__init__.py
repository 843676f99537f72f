"""The PPO results page (``docs/ppo.md``): PPO on Wordle from BC (``results``), RLHF against a learned
reward model (``rlhf``) and the sentiment-like continuation task (``sentiment``, ``sentiment_base``).
"""
