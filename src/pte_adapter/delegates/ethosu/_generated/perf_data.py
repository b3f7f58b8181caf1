"""Ethos-U system configurations, memory modes and accelerator tables. GENERATED, do not edit.

Produced by scripts/gen_ethosu_perf_data.py from ethos-u-vela 5.2.0: its default
config file (ethosu/config_files/Arm/vela.ini) and the accelerator tables and .ini rules of
its C++ core (ethosu/regor). Numbers are Arm's; their use is in delegates/ethosu/perf.py.
"""

from __future__ import annotations

from typing import Any, Final

VELA_VERSION: Final = "5.2.0"

# Vela --system-config name -> core clock (Hz), memory behind each AXI port, memory parameters.
SYSTEM_CONFIGS: Final[dict[str, dict[str, Any]]] = {
    "Ethos_U55_Deep_Embedded": {
        "axi0_port": "Sram",
        "axi1_port": "OffChipFlash",
        "core_clock": 200000000.0,
        "memories": {
            "OffChipFlash": {
                "burst_length": 128,
                "clock_scale": 0.0625,
                "max_reads": 2,
                "max_writes": 0,
                "read_latency": 64,
                "write_latency": 0,
            },
            "Sram": {
                "burst_length": 32,
                "clock_scale": 1.0,
                "max_reads": 8,
                "max_writes": 8,
                "read_latency": 32,
                "write_latency": 32,
            },
        },
    },
    "Ethos_U55_High_End_Embedded": {
        "axi0_port": "Sram",
        "axi1_port": "OffChipFlash",
        "core_clock": 500000000.0,
        "memories": {
            "OffChipFlash": {
                "burst_length": 128,
                "clock_scale": 0.125,
                "max_reads": 2,
                "max_writes": 0,
                "read_latency": 64,
                "write_latency": 0,
            },
            "Sram": {
                "burst_length": 32,
                "clock_scale": 1.0,
                "max_reads": 4,
                "max_writes": 4,
                "read_latency": 32,
                "write_latency": 32,
            },
        },
    },
    "Ethos_U65_Client_Server": {
        "axi0_port": "Sram",
        "axi1_port": "Dram",
        "core_clock": 1000000000.0,
        "memories": {
            "Dram": {
                "burst_length": 128,
                "clock_scale": 0.75,
                "max_reads": 24,
                "max_writes": 12,
                "read_latency": 500,
                "write_latency": 250,
            },
            "Sram": {
                "burst_length": 32,
                "clock_scale": 1.0,
                "max_reads": 16,
                "max_writes": 16,
                "read_latency": 32,
                "write_latency": 32,
            },
        },
    },
    "Ethos_U65_Embedded": {
        "axi0_port": "Sram",
        "axi1_port": "OffChipFlash",
        "core_clock": 500000000.0,
        "memories": {
            "OffChipFlash": {
                "burst_length": 128,
                "clock_scale": 0.0625,
                "max_reads": 2,
                "max_writes": 0,
                "read_latency": 64,
                "write_latency": 0,
            },
            "Sram": {
                "burst_length": 32,
                "clock_scale": 1.0,
                "max_reads": 8,
                "max_writes": 8,
                "read_latency": 32,
                "write_latency": 32,
            },
        },
    },
    "Ethos_U65_High_End": {
        "axi0_port": "Sram",
        "axi1_port": "Dram",
        "core_clock": 1000000000.0,
        "memories": {
            "Dram": {
                "burst_length": 128,
                "clock_scale": 0.234375,
                "max_reads": 24,
                "max_writes": 12,
                "read_latency": 500,
                "write_latency": 250,
            },
            "Sram": {
                "burst_length": 32,
                "clock_scale": 1.0,
                "max_reads": 16,
                "max_writes": 16,
                "read_latency": 32,
                "write_latency": 32,
            },
        },
    },
    "Ethos_U65_Mid_End": {
        "axi0_port": "Sram",
        "axi1_port": "Dram",
        "core_clock": 500000000.0,
        "memories": {
            "Dram": {
                "burst_length": 128,
                "clock_scale": 0.46875,
                "max_reads": 12,
                "max_writes": 6,
                "read_latency": 500,
                "write_latency": 250,
            },
            "Sram": {
                "burst_length": 32,
                "clock_scale": 1.0,
                "max_reads": 8,
                "max_writes": 8,
                "read_latency": 32,
                "write_latency": 32,
            },
        },
    },
    "Ethos_U85_SYS_DRAM_High": {
        "axi0_port": "Sram",
        "axi1_port": "Dram",
        "core_clock": 1000000000.0,
        "memories": {
            "Dram": {
                "burst_length": 128,
                "clock_scale": 0.75,
                "max_reads": 64,
                "max_writes": 32,
                "ports_used": 2,
                "read_latency": 500,
                "write_latency": 250,
            },
            "Sram": {
                "burst_length": 64,
                "clock_scale": 1.0,
                "max_reads": 8,
                "max_writes": 8,
                "ports_used": 4,
                "read_latency": 32,
                "write_latency": 32,
            },
        },
    },
    "Ethos_U85_SYS_DRAM_Low": {
        "axi0_port": "Sram",
        "axi1_port": "Dram",
        "core_clock": 500000000.0,
        "memories": {
            "Dram": {
                "burst_length": 128,
                "clock_scale": 0.46875,
                "max_reads": 24,
                "max_writes": 12,
                "ports_used": 1,
                "read_latency": 500,
                "write_latency": 250,
            },
            "Sram": {
                "burst_length": 64,
                "clock_scale": 1.0,
                "max_reads": 8,
                "max_writes": 8,
                "ports_used": 2,
                "read_latency": 16,
                "write_latency": 16,
            },
        },
    },
    "Ethos_U85_SYS_DRAM_Mid": {
        "axi0_port": "Sram",
        "axi1_port": "Dram",
        "core_clock": 1000000000.0,
        "memories": {
            "Dram": {
                "burst_length": 128,
                "clock_scale": 0.75,
                "max_reads": 64,
                "max_writes": 32,
                "ports_used": 1,
                "read_latency": 500,
                "write_latency": 250,
            },
            "Sram": {
                "burst_length": 64,
                "clock_scale": 1.0,
                "max_reads": 8,
                "max_writes": 8,
                "ports_used": 2,
                "read_latency": 32,
                "write_latency": 32,
            },
        },
    },
    "Ethos_U85_SYS_Flash_High": {
        "axi0_port": "Sram",
        "axi1_port": "OffChipFlash",
        "core_clock": 500000000.0,
        "memories": {
            "OffChipFlash": {
                "burst_length": 128,
                "clock_scale": 0.0625,
                "max_reads": 2,
                "max_writes": 0,
                "ports_used": 1,
                "read_latency": 64,
                "write_latency": 0,
            },
            "Sram": {
                "burst_length": 64,
                "clock_scale": 1.0,
                "max_reads": 8,
                "max_writes": 8,
                "ports_used": 2,
                "read_latency": 32,
                "write_latency": 32,
            },
        },
    },
    "Ethos_U85_SYS_Flash_Low": {
        "axi0_port": "Sram",
        "axi1_port": "OffChipFlash",
        "core_clock": 200000000.0,
        "memories": {
            "OffChipFlash": {
                "burst_length": 128,
                "clock_scale": 0.0625,
                "max_reads": 2,
                "max_writes": 0,
                "ports_used": 1,
                "read_latency": 32,
                "write_latency": 0,
            },
            "Sram": {
                "burst_length": 64,
                "clock_scale": 1,
                "max_reads": 8,
                "max_writes": 8,
                "ports_used": 2,
                "read_latency": 8,
                "write_latency": 8,
            },
        },
    },
}

# Vela --memory-mode name -> AXI port of the constants, the arena and the staging cache.
MEMORY_MODES: Final[dict[str, dict[str, Any]]] = {
    "Dedicated_Sram": {
        "arena_cache_size": None,
        "arena_mem_area": "Axi1",
        "cache_mem_area": "Axi0",
        "const_mem_area": "Axi1",
    },
    "Dedicated_Sram_256KB": {
        "arena_cache_size": 262144,
        "arena_mem_area": "Axi1",
        "cache_mem_area": "Axi0",
        "const_mem_area": "Axi1",
    },
    "Dedicated_Sram_384KB": {
        "arena_cache_size": 393216,
        "arena_mem_area": "Axi1",
        "cache_mem_area": "Axi0",
        "const_mem_area": "Axi1",
    },
    "Dedicated_Sram_512KB": {
        "arena_cache_size": 524288,
        "arena_mem_area": "Axi1",
        "cache_mem_area": "Axi0",
        "const_mem_area": "Axi1",
    },
    "Shared_Sram": {
        "arena_cache_size": None,
        "arena_mem_area": "Axi0",
        "cache_mem_area": "Axi0",
        "const_mem_area": "Axi1",
    },
    "Sram_Only": {
        "arena_cache_size": None,
        "arena_mem_area": "Axi0",
        "cache_mem_area": "Axi0",
        "const_mem_area": "Axi0",
    },
}

# --accelerator-config -> MACs, cores, OFM micro-blocks (h, w, c) and cycles per element.
ACCELERATORS: Final[dict[str, dict[str, Any]]] = {
    "ethos-u55-128": {
        "activation_cycles": [1.0, 0.5, 0.0],
        "channel_read_buffers": None,
        "cores": 1,
        "macs": 128,
        "ofm_ublocks": [(1, 2, 8)],
        "output_cycles": [0.75, 1.25, 0.75, 0.75, 1.0, 1.5, 0.25, 0.5],
    },
    "ethos-u55-256": {
        "activation_cycles": [1.0, 0.25, 0.0],
        "channel_read_buffers": None,
        "cores": 1,
        "macs": 256,
        "ofm_ublocks": [(2, 2, 8)],
        "output_cycles": [0.625, 1.125, 0.5, 0.375, 0.5, 0.75, 0.125, 0.25],
    },
    "ethos-u55-32": {
        "activation_cycles": [1.0, 1.0, 0.0],
        "channel_read_buffers": None,
        "cores": 1,
        "macs": 32,
        "ofm_ublocks": [(1, 1, 4)],
        "output_cycles": [2.0, 3.0, 3.0, 3.0, 4.0, 6.0, 1.0, 2.0],
    },
    "ethos-u55-64": {
        "activation_cycles": [1.0, 1.0, 0.0],
        "channel_read_buffers": None,
        "cores": 1,
        "macs": 64,
        "ofm_ublocks": [(1, 1, 8)],
        "output_cycles": [1.0, 1.5, 1.5, 1.5, 2.0, 3.0, 0.5, 1.0],
    },
    "ethos-u65-256": {
        "activation_cycles": [1.0, 0.25, 0.0],
        "channel_read_buffers": None,
        "cores": 1,
        "macs": 256,
        "ofm_ublocks": [(2, 2, 8)],
        "output_cycles": [0.625, 1.125, 0.5, 0.375, 0.5, 0.75, 0.125, 0.25],
    },
    "ethos-u65-512": {
        "activation_cycles": [0.5, 0.125, 0.0],
        "channel_read_buffers": None,
        "cores": 2,
        "macs": 256,
        "ofm_ublocks": [(2, 2, 8)],
        "output_cycles": [0.3125, 0.5625, 0.25, 0.1875, 0.25, 0.375, 0.0625, 0.125],
    },
    "ethos-u85-1024": {
        "activation_cycles": [0.0625, 0.125],
        "channel_read_buffers": [256, 256, 416, 208, 256, 16],
        "cores": 4,
        "macs": 1024,
        "ofm_ublocks": [(2, 2, 32), (1, 4, 32), (2, 4, 16)],
        "output_cycles": [0.0625, 0.125, 0.25, 0.5, 0.125, 0.25],
        "resize_cycles_high": [0.0625, 0.125],
        "resize_cycles_low": [0.125, 0.125],
    },
    "ethos-u85-128": {
        "activation_cycles": [0.5, 1.0],
        "channel_read_buffers": [64, 64, 128, 128, 104, 16],
        "cores": 1,
        "macs": 128,
        "ofm_ublocks": [(1, 2, 8), (1, 1, 16)],
        "output_cycles": [0.5, 0.5, 0.5, 1.0, 1.0, 1.0],
        "resize_cycles_high": [0.5, 1.0],
        "resize_cycles_low": [0.5, 1.0],
    },
    "ethos-u85-2048": {
        "activation_cycles": [0.03125, 0.0625],
        "channel_read_buffers": [256, 256, 512, 256, 256, 16],
        "cores": 4,
        "macs": 2048,
        "ofm_ublocks": [(2, 2, 64), (1, 4, 64), (4, 4, 16)],
        "output_cycles": [0.03125, 0.0625, 0.125, 0.25, 0.0625, 0.125],
        "resize_cycles_high": [0.03125, 0.0625],
        "resize_cycles_low": [0.0625, 0.0625],
    },
    "ethos-u85-256": {
        "activation_cycles": [0.25, 0.5],
        "channel_read_buffers": [104, 104, 128, 128, 128, 16],
        "cores": 1,
        "macs": 256,
        "ofm_ublocks": [(1, 2, 16), (1, 4, 8), (2, 2, 8)],
        "output_cycles": [0.25, 0.25, 0.25, 0.5, 0.5, 0.5],
        "resize_cycles_high": [0.25, 0.5],
        "resize_cycles_low": [0.25, 0.5],
    },
    "ethos-u85-512": {
        "activation_cycles": [0.125, 0.25],
        "channel_read_buffers": [128, 128, 256, 256, 128, 16],
        "cores": 2,
        "macs": 512,
        "ofm_ublocks": [(2, 2, 16), (1, 4, 16)],
        "output_cycles": [0.125, 0.125, 0.25, 0.5, 0.25, 0.25],
        "resize_cycles_high": [0.125, 0.25],
        "resize_cycles_low": [0.125, 0.25],
    },
}

# How regor turns a system config into memories (bandwidth = clock scale x AXI width x ports).
MEMORY_RULES: Final[dict[str, Any]] = {
    "axi_bytes_per_cycle_other": 16,
    "axi_bytes_per_cycle_u55_system": 8,
    "memory_defaults": {
        "burst_length": 64,
        "clock_scale": 1,
        "max_reads": 1,
        "max_writes": 1,
        "ports_used": 1,
        "read_latency": 1,
        "write_latency": 1,
    },
}

# What Vela assumes when the command line names no system config / memory mode.
DEFAULTS: Final[dict[str, dict[str, str]]] = {
    "ethos-u55": {"memory_mode": "Shared_Sram", "system_config": "Ethos_U55_High_End_Embedded"},
    "ethos-u65": {
        "memory_mode": "Dedicated_Sram_384KB",
        "system_config": "Ethos_U65_Client_Server",
    },
    "ethos-u85": {"memory_mode": "Dedicated_Sram_384KB", "system_config": "Ethos_U85_SYS_DRAM_Mid"},
}
