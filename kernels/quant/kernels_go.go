package quant

import "unsafe"

// goImpl is the "go" backend: the specification loop of every kernel.
func goImpl() *impl {
	im := &impl{name: "go", isa: "go", mr: 4, lacks: func() string { return "" },
		k: map[Format][]kern{}, goTiles: Formats()}
	for _, f := range Formats() {
		im.k[f] = goKerns(f, im.mr, 8)
	}
	return im
}

// goKerns returns kernGo's tiles of heights 1..mr for format f, reading
// corrections scaled for corrMul lanes per block (8: corrZ, 4: corrY).
func goKerns(f Format, mr int, corrMul int32) []kern {
	var ks []kern
	for m := 1; m <= mr; m++ {
		ks = append(ks, func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int) {
			kernGo(f, m, PanelRows, corrMul, np, a, as, ac, sa, b, bs, c, ldc)
		})
	}
	return ks
}

// kernGo is the specification of every kernel: for r < mr, j < nr,
//
//	c[r*ldc+j] = Σ_{p<np} Σ_{h<2} float32(S(r,j,p,h)) · (dw(j,p,h)·dx(r,p,h))
//	S(r,j,p,h) = Σ_{e<32} U(j,p,h,e)·Q(r,p,h,e) + 8·ac[p*sa4+r*2+h]
//
// with U the stored unsigned weights (q8_0: the byte; q4_0: the nibble) of
// row j of the panel at b (pair p at b + (p·PanelRows + j)·pairBytes) and
// Q the int8 activations of row r (pair p at a + p·sa + r·64), both at lane
// position lanePos(h, e); dw the fp16 scale in half h of
// bs[p·PanelRows + j], dx = as[p·sa4 + r·2 + h] with sa4 = sa/32 (sa/8
// bytes: the assembly's stride). ac holds
// −o·Σq/8 (Activations.corrZ) with corrMul = 8, or −o·Σq/4 (corrY) with
// corrMul = 4, so S = Σ_e (U − o)·Q exactly. The float sum
// runs over p then h; the assembly kernels sum in another order.
func kernGo(f Format, mr, nr int, corrMul int32, np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int) {
	if f.kquant() {
		kernGoK(f, mr, nr, np, a, as, ac, sa, b, bs, c, ldc)
		return
	}
	pb := f.pairBytes()
	sa4 := sa / 32
	A := unsafe.Slice(a, (np-1)*sa+mr*pairLen)
	AS := unsafe.Slice(as, (np-1)*sa4+mr*2)
	AC := unsafe.Slice(ac, (np-1)*sa4+mr*2)
	B := unsafe.Slice(b, np*PanelRows*pb)
	BS := unsafe.Slice(bs, np*PanelRows)
	C := unsafe.Slice(c, (mr-1)*ldc+nr)
	for r := range mr {
		for j := range nr {
			var sum float32
			for p := range np {
				wq := B[(p*PanelRows+j)*pb:][:pb]
				xq := A[p*sa+r*pairLen:][:pairLen]
				var s [2]int32
				for pos := range pairLen {
					s[(pos/4)%2] += f.getU(wq, pos) * int32(int8(xq[pos]))
				}
				d := BS[p*PanelRows+j]
				for h := range 2 {
					s[h] += corrMul * AC[p*sa4+r*2+h]
					sc := FP16ToFloat32(uint16(d>>(16*h))) * AS[p*sa4+r*2+h]
					sum += float32(s[h]) * sc
				}
			}
			C[r*ldc+j] = sum
		}
	}
}
