"""wordle_tweets dataset."""
