"""The game day's background load: virtual users on the Online Boutique mix, started and stopped."""
