M = pl.dynamic("M")


@pl.program
class Dyn:

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        self.main_incore_0(x, out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def main_incore_0(self, x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        pl.func_attr({'name_hint': 'main_incore_0'})
        add: pl.Tensor[[M, 64], pl.FP32] = pl.tensor.add(x, x)
        pl.tensor.assemble(out, add, [0, 0])
