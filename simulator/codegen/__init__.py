"""Code generation against harnesses: mask a target, sample implementations, splice, score."""
