"""What the tests share: helpers, fakes on loopback, and the suite's own pytest plugins."""
