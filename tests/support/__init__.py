"""Helpers shared by the tests: example files and oracles, the browser driver, the fuzzer."""
