"""The numeric gap of a recorded run: its intermediate outputs (the ETDump's debug events, the
debug buffer's bytes) placed on the program, named by the ETRecord's layers, and compared with a
reference.

- logged: debug events -> each instruction's output tensors, per method and run
- layers: each output's layer, op names and join key from the ETRecord
- values: a logged tensor's values as numbers; an integer tensor's quantization parameters
- metrics: MSE, L1, SNR (the Inspector's definitions), mean and max |difference|, cosine
- side: one program with its run (the above, once)
- compare: rows of one run, or joined by layer with another program's run (`--reference`)
- aot: rows against the ETRecord's graph run by ExecuTorch's Inspector (`--aot`, opt-in)
- rows: the typed result every view reads (rows, worst, first below the threshold)
"""
