"""One decoder per delegate payload kind, each returning backend-neutral `DelegateGraph`s.

`registry.decode_payload` picks the decoder; `graph` holds the neutral types.
"""
