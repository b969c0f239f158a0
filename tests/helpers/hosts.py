"""Made-up hosts: the text of ``/proc/cpuinfo`` and ``/proc/meminfo`` of a machine, and its CPU and GPU names."""

from __future__ import annotations

EPYC = "AMD EPYC 7B13 64-Core Processor"
XEON = "Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz"
A100 = "NVIDIA A100-SXM4-40GB"


def cpuinfo(model: str, cpus: int = 2) -> str:
    """``/proc/cpuinfo`` of ``cpus`` AMD processors named ``model`` (each at its own clock)."""
    blocks = []
    for i in range(cpus):
        blocks.append(
            f"processor\t: {i}\nvendor_id\t: AuthenticAMD\nmodel name\t: {model}\n"
            f"cpu MHz\t\t: {2450.0 + i * 13.7}\nbogomips\t: 4900.00\n"
        )
    return "\n".join(blocks)


def meminfo(total_kib: int, free_kib: int = 1000) -> str:
    """``/proc/meminfo`` of a machine of ``total_kib`` KiB, ``free_kib`` of it free."""
    return f"MemTotal:       {total_kib} kB\nMemFree:        {free_kib} kB\nMemAvailable:   {free_kib} kB\n"
