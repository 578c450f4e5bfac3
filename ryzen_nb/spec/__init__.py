"""The facts layer: what ryzen-nb knows about Ryzen AI NPUs, defined once, each figure with its source.

* :mod:`ryzen_nb.spec.targets` — the NPU targets (Phoenix, Hawk Point, Strix, Krackan, Strix Halo);
* :mod:`ryzen_nb.spec.operators` — the supported-operator table, the MAC operators, fused activations;
* :mod:`ryzen_nb.spec.dpu` — fixed-point constants of the integer datapath and the X1 shift limits.

Everything above this layer (quantizer, emulator, CLI, widgets, the JupyterLab extension) reads
these; nothing here imports the rest of ryzen-nb except :mod:`ryzen_nb.errors`.
"""
