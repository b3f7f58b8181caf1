"""One package per backend, each decoding its payloads into backend-neutral `DelegateGraph`s.

`hooks.py` is the one door to a backend's package (every hook's type, its accessor, one failure
policy); `registry.py` runs the hooks over a program (`decode_payload` picks the decoder).
"""
