// smopa_tile: x0 = a (int8[SVL]), x1 = b (int8[SVL]), x2 = out (int32[4][SVLw][SVLw]), SVLw = SVL/32 bits
// For every tile t in 0..3: ZA{t}.S = SMOPA(a, b) computed into that tile with a different multiplier,
// then every horizontal slice of every tile is stored. Returns SVL in bytes.
    .arch armv9-a+sme
    .text
    .global smopa_tile
smopa_tile:
    smstart
    ptrue p0.b
    ld1b {z0.b}, p0/z, [x0]
    ld1b {z1.b}, p0/z, [x1]
    zero {za}
    smopa za0.s, p0/m, p0/m, z0.b, z1.b
    smopa za1.s, p0/m, p0/m, z0.b, z1.b
    smopa za1.s, p0/m, p0/m, z0.b, z1.b
    smopa za2.s, p0/m, p0/m, z0.b, z1.b
    smopa za2.s, p0/m, p0/m, z0.b, z1.b
    smopa za2.s, p0/m, p0/m, z0.b, z1.b
    smopa za3.s, p0/m, p0/m, z0.b, z1.b
    smopa za3.s, p0/m, p0/m, z0.b, z1.b
    smopa za3.s, p0/m, p0/m, z0.b, z1.b
    smopa za3.s, p0/m, p0/m, z0.b, z1.b
    cntw x3
    mov w12, #0
1:  st1w {za0h.s[w12, 0]}, p0, [x2]
    addvl x2, x2, #1
    add w12, w12, #1
    cmp x12, x3
    b.lt 1b
    mov w12, #0
2:  st1w {za1h.s[w12, 0]}, p0, [x2]
    addvl x2, x2, #1
    add w12, w12, #1
    cmp x12, x3
    b.lt 2b
    mov w12, #0
3:  st1w {za2h.s[w12, 0]}, p0, [x2]
    addvl x2, x2, #1
    add w12, w12, #1
    cmp x12, x3
    b.lt 3b
    mov w12, #0
4:  st1w {za3h.s[w12, 0]}, p0, [x2]
    addvl x2, x2, #1
    add w12, w12, #1
    cmp x12, x3
    b.lt 4b
    rdsvl x0, #1
    smstop
    ret
