"""Pieces of the test hardware descriptions (make-*-hardware.py): every
efficiency at 1, and links of one bandwidth and latency at every size."""

FLAT = {"points": [[1.0, 1.0], [1e18, 1.0]], "source": "test"}


def flat_efficiencies(h, launch_s):
    """Matmuls and attention at peak, elementwise at the memory bandwidth,
    each kernel launch `launch_s` seconds."""
    e = h["efficiency"]
    e["gemm"] = dict(FLAT)
    # Every matrix product, its rows whole 16-byte units or not.
    e.pop("gemm_unaligned", None)
    e["attention"] = {"value": 1.0, "source": "test"}
    # The CUDA device's own attention kernels at peak too.
    e.pop("attention_own_kernels", None)
    e["elementwise_bandwidth"] = {"value": 1.0, "source": "test"}
    e["kernel_launch_s"] = {"value": launch_s, "source": "test"}


def set_links(h, bytes_per_s, latency_s):
    """Both links at `bytes_per_s` for every size, `latency_s` each."""
    for link in ("intra_node", "inter_node"):
        h[link]["bytes_per_s"] = bytes_per_s
        h[link]["latency_s"] = latency_s
        h["efficiency"]["collective_bus_bandwidth"][link] = dict(FLAT)
