M = pl.dynamic("M")


@pl.program
class Dyn:

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        self.main_incore_0(x, out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def main_incore_0(self, x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        pl.func_attr({'name_hint': 'main_incore_0', 'auto_pipelined': ['r']})
        for r in pl.pipeline(0, M, 128, stage=4):
            rows: pl.Scalar[pl.INDEX] = pl.minimum(128, M - r)
            x_vec: pl.Tile[[128, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load_partial(x, [r, 0], [rows, 64], shape=[128, 64], target_memory=pl.Mem.Vec)
            add: pl.Tile[[128, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(x_vec, x_vec)
            pl.tile.store_partial(add, [r, 0], out, [rows, 64])
