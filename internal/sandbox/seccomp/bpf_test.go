package seccomp

import (
	"encoding/binary"
	"fmt"
)

// seccompData is struct seccomp_data.
type seccompData struct {
	nr   uint32
	arch uint32
	ip   uint64
	args [6]uint64
}

func (d seccompData) bytes() []byte {
	b := make([]byte, 0, 64)
	b = binary.LittleEndian.AppendUint32(b, d.nr)
	b = binary.LittleEndian.AppendUint32(b, d.arch)
	b = binary.LittleEndian.AppendUint64(b, d.ip)
	for _, a := range d.args {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	return b
}

// check applies the structural rules of the kernel's classic BPF checker
// (bpf_check_classic) and seccomp_check_filter to p.
func check(p Program) error {
	n := len(p.insns)
	if n == 0 || n > maxInsns {
		return fmt.Errorf("length %d", n)
	}
	if len(p.notes) != n {
		return fmt.Errorf("%d notes for %d instructions", len(p.notes), n)
	}
	for pc, in := range p.insns {
		target := func(off int) error {
			if to := pc + 1 + off; to >= n {
				return fmt.Errorf("%04d: jump to %d, past the end", pc, to)
			}
			return nil
		}
		switch in.op {
		case opLdAbs:
			if in.k%4 != 0 || in.k+4 > 64 {
				return fmt.Errorf("%04d: load of seccomp_data offset %d", pc, in.k)
			}
		case opAndK, opRetK:
		case opJa:
			if err := target(int(in.k)); err != nil {
				return err
			}
		case opJeqK, opJsetK:
			if err := target(int(in.jt)); err != nil {
				return err
			}
			if err := target(int(in.jf)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%04d: opcode %#x", pc, in.op)
		}
	}
	if last := p.insns[n-1]; last.op != opRetK {
		return fmt.Errorf("last instruction %#x is not ret", last.op)
	}
	return nil
}

// run interprets p over d like the kernel does and returns the filter's
// verdict. p must have passed check.
func run(p Program, d seccompData) (uint32, error) {
	mem := d.bytes()
	var acc uint32
	for pc := 0; pc < len(p.insns); pc++ {
		in := p.insns[pc]
		switch in.op {
		case opLdAbs:
			acc = binary.LittleEndian.Uint32(mem[in.k:])
		case opAndK:
			acc &= in.k
		case opJa:
			pc += int(in.k)
		case opJeqK:
			pc += int(pick(acc == in.k, in.jt, in.jf))
		case opJsetK:
			pc += int(pick(acc&in.k != 0, in.jt, in.jf))
		case opRetK:
			return in.k, nil
		default:
			return 0, fmt.Errorf("%04d: opcode %#x", pc, in.op)
		}
	}
	return 0, fmt.Errorf("ran off the end")
}

func pick(cond bool, jt, jf uint8) uint8 {
	if cond {
		return jt
	}
	return jf
}
