"""Task models that are not agents: the Visual Dialogue guesser (``visdial_guesser``) and the Reddit upvote
classifier (``reddit_upvotes``), used as rewards and by the evaluation.
"""
