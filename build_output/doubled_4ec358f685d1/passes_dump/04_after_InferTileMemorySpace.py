@pl.program
class doubled:

    @pl.function(type=pl.FunctionType.Orchestration)
    def doubled(self, x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        self.doubled_incore_0(x, out, access=['In', 'Out'])
        return out

    @pl.function(type=pl.FunctionType.AIV)
    def doubled_incore_0(self, x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        pl.func_attr({'memory_plan': pl.MemoryPlan.placed({'x_vec': (pl.Mem.Vec, 0x0, 16384), 'add': (pl.Mem.Vec, 0x0, 16384)}, {pl.Mem.Vec: 16384})})
        x_vec: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], shape=[64, 64], target_memory=pl.Mem.Vec)  # Vec[0x0, +16384]
        add: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(x_vec, x_vec)  # Vec[0x0, +16384]
        pl.tile.store(add, [0, 0], out)
