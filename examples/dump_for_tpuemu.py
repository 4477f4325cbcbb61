#!/usr/bin/env python3
"""Dump a JAX program's compiled HLO for `tpuemu replay` (not run in CI).

Two ways, picked by --backend:

  tpu (default): compile for a TPU topology you do not have, on this CPU host,
      as MaxText's train_compile.py does: jax.experimental.topologies describes
      the TPU slice (libtpu must be installed: pip install 'jax[tpu]'), and
      jax.ShapeDtypeStruct arguments mean nothing is allocated.  The module is
      what the TPU compiler makes: its fusions, its layouts and its
      latency-hiding schedule (replay says "backend TPU").

  cpu: the fallback without libtpu: N fake CPU devices.  The partitioning
      (collectives, their groups and bytes) is the same, but the fusions are
      XLA:CPU's, matmuls may be oneDNN custom-calls, and the module is not
      scheduled for overlap: read replay's scheduled_step_us (the TPU-like
      overlap) beside step_us, and take compute times as indicative.

Both write two files: OUT.hlo (compiled.as_text(), the module to replay) and,
through XLA_FLAGS, the dump folder OUT.dump/ (both flags in one string; the
file to replay from there is *.after_optimizations.txt of the jit_step module,
not before_optimizations, which is not partitioned yet).

    python3 examples/dump_for_tpuemu.py --backend tpu --topology v5e:4x4 --out step
    build/tpuemu replay step.hlo --topology 4x4
    python3 examples/dump_for_tpuemu.py --backend cpu --devices 16 --out step_cpu
    build/tpuemu replay step_cpu.hlo --topology 4x4
"""
import argparse
import os
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=("tpu", "cpu"), default="tpu")
    p.add_argument("--topology", default="v5e:4x4",
                   help="TPU topology name, e.g. v5e:4x4 or v5p:4x4x4 (--backend tpu)")
    p.add_argument("--devices", type=int, default=16, help="fake CPU devices (--backend cpu)")
    p.add_argument("--out", default="step", help="writes OUT.hlo and the dump folder OUT.dump")
    return p.parse_args()


args = parse_args()
# XLA_FLAGS is read once, when jax first initialises a backend: set it before importing jax.
flags = ["--xla_dump_to=%s.dump" % args.out, "--xla_dump_hlo_as_text"]
if args.backend == "cpu":
    flags.insert(0, "--xla_force_host_platform_device_count=%d" % args.devices)
else:
    # The TPU compiler runs on this host: no TPU is queried or needed.
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
os.environ["XLA_FLAGS"] = " ".join(flags + [os.environ.get("XLA_FLAGS", "")]).strip()
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402


def step(x, w1, w2):
    """The program: here 8 scanned MLP layers (put yours here)."""

    def layer(x, w):
        return x + jax.nn.gelu(x @ w[0]) @ w[1], None

    x, _ = jax.lax.scan(layer, x, (w1, w2))
    return jnp.sum(x.astype(jnp.float32))


if args.backend == "tpu":
    from jax.experimental.topologies import get_topology_desc

    # 2x2 chips per host is the v4/v5e/v5p host block; v4 and v5p run as
    # "megacore" (one device per chip).  MaxText's accelerator_to_spec_map.py
    # lists the values for each slice type.
    chip = args.topology.split(":")[0]
    devices = get_topology_desc(
        platform="tpu",
        topology_name=args.topology,
        chip_config_name="megacore" if chip in ("v4", "v5p") else "default",
        chips_per_host_bounds=(2, 2, 1),
        num_slices=1,
    ).devices
else:
    devices = jax.devices()
n = len(devices)
data = 4 if n % 4 == 0 else 1
mesh = Mesh(np.array(devices).reshape(data, n // data), ("data", "model"))
shard = lambda *spec: NamedSharding(mesh, P(*spec))  # noqa: E731

# Shapes only: nothing is allocated on any device.
x = jax.ShapeDtypeStruct((8192, 4096), jnp.bfloat16, sharding=shard("data", None))
w1 = jax.ShapeDtypeStruct((8, 4096, 16384), jnp.bfloat16, sharding=shard(None, "data", "model"))
w2 = jax.ShapeDtypeStruct((8, 16384, 4096), jnp.bfloat16, sharding=shard(None, "model", "data"))
compiled = jax.jit(step, out_shardings=shard()).lower(x, w1, w2).compile()
with open(args.out + ".hlo", "w") as f:
    f.write(compiled.as_text())
print("wrote %s.hlo (%d devices, %s backend); the dump is in %s.dump/ "
      "(replay its *jit_step*after_optimizations.txt)" % (args.out, n, args.backend, args.out),
      file=sys.stderr)
