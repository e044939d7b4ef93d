package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Classic BPF opcodes (<linux/filter.h>), only those the compiler emits.
const (
	opLdAbs  = 0x20 // BPF_LD | BPF_W | BPF_ABS
	opAndK   = 0x54 // BPF_ALU | BPF_AND | BPF_K
	opJa     = 0x05 // BPF_JMP | BPF_JA
	opJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	opJsetK  = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	opRetK   = 0x06 // BPF_RET | BPF_K
	maxInsns = 4096 // BPF_MAXINSNS
)

// Return values (<linux/seccomp.h>).
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000

	errnoEPERM  = 1
	errnoENOSYS = 38
)

// insn is struct sock_filter.
type insn struct {
	op     uint16
	jt, jf uint8
	k      uint32
}

// Program is a compiled seccomp filter for one [Arch]. The zero Program is
// empty and cannot be installed.
type Program struct {
	arch  Arch
	insns []insn
	notes []string // one per instruction, for Disassemble
}

// Arch reports the architecture p was compiled for.
func (p Program) Arch() Arch { return p.arch }

// MarshalBinary encodes p as the array of struct sock_filter that
// seccomp(2) and bwrap --seccomp read. Every supported arch is little endian.
func (p Program) MarshalBinary() ([]byte, error) {
	if len(p.insns) == 0 {
		return nil, errors.New("seccomp: empty program")
	}
	b := make([]byte, 0, 8*len(p.insns))
	for _, in := range p.insns {
		b = binary.LittleEndian.AppendUint16(b, in.op)
		b = append(b, in.jt, in.jf)
		b = binary.LittleEndian.AppendUint32(b, in.k)
	}
	return b, nil
}

// Disassemble renders p one instruction per line, with jump targets as
// absolute instruction numbers and a comment naming what is compared. The
// output is stable and is what the golden tests pin.
func (p Program) Disassemble() string {
	var b strings.Builder
	fmt.Fprintf(&b, "; seccomp filter for %s, %d instructions\n", p.arch, len(p.insns))
	for pc, in := range p.insns {
		line := fmt.Sprintf("%04d: %s", pc, in.format(pc))
		if pc < len(p.notes) && p.notes[pc] != "" {
			line = fmt.Sprintf("%-42s; %s", line, p.notes[pc])
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func (in insn) format(pc int) string {
	jt, jf := pc+1+int(in.jt), pc+1+int(in.jf)
	switch in.op {
	case opLdAbs:
		return fmt.Sprintf("ld [%d]", in.k)
	case opAndK:
		return fmt.Sprintf("and #%#x", in.k)
	case opJa:
		return fmt.Sprintf("ja %d", pc+1+int(in.k))
	case opJeqK:
		return fmt.Sprintf("jeq #%#x jt %d jf %d", in.k, jt, jf)
	case opJsetK:
		return fmt.Sprintf("jset #%#x jt %d jf %d", in.k, jt, jf)
	case opRetK:
		return fmt.Sprintf("ret #%#08x", in.k)
	}
	return fmt.Sprintf(".insn %#04x %d %d %#x", in.op, in.jt, in.jf, in.k)
}

// label names an instruction before it is emitted. Jumps only go forward,
// so every label is bound after the jumps that use it.
type label int

// next is the instruction after the jump.
const next label = -1

type fixup struct {
	pc     int
	jt, jf label
}

// asm assembles a program from instructions and labels.
type asm struct {
	insns  []insn
	notes  []string
	labels []int // label to pc; -1 while unbound
	fixups []fixup
}

func (a *asm) newLabel() label {
	a.labels = append(a.labels, -1)
	return label(len(a.labels) - 1)
}

func (a *asm) bind(l label) { a.labels[l] = len(a.insns) }

func (a *asm) emit(in insn, note string) {
	a.insns = append(a.insns, in)
	a.notes = append(a.notes, note)
}

func (a *asm) ld(off uint32, note string) { a.emit(insn{op: opLdAbs, k: off}, note) }
func (a *asm) and(k uint32, note string)  { a.emit(insn{op: opAndK, k: k}, note) }
func (a *asm) ret(k uint32, note string)  { a.emit(insn{op: opRetK, k: k}, note) }
func (a *asm) jeq(k uint32, jt, jf label, note string) {
	a.jump(opJeqK, k, jt, jf, note)
}

func (a *asm) jset(k uint32, jt, jf label, note string) {
	a.jump(opJsetK, k, jt, jf, note)
}

func (a *asm) jump(op uint16, k uint32, jt, jf label, note string) {
	a.fixups = append(a.fixups, fixup{pc: len(a.insns), jt: jt, jf: jf})
	a.emit(insn{op: op, k: k}, note)
}

// finish resolves the jumps. Conditional jumps reach at most 255
// instructions ahead; the compiler keeps each section's targets close, and
// going further is a compiler bug reported as an error.
func (a *asm) finish(arch Arch) (Program, error) {
	rel := func(pc int, l label) (uint8, error) {
		if l == next {
			return 0, nil
		}
		to := a.labels[l]
		if to <= pc {
			return 0, fmt.Errorf("seccomp: instruction %d jumps to unbound or earlier label %d", pc, l)
		}
		d := to - pc - 1
		if d > 255 {
			return 0, fmt.Errorf("seccomp: instruction %d jumps %d instructions ahead, more than 255", pc, d)
		}
		return uint8(d), nil //nolint:gosec // d <= 255 is checked above
	}
	for _, f := range a.fixups {
		var err error
		in := &a.insns[f.pc]
		if in.jt, err = rel(f.pc, f.jt); err != nil {
			return Program{}, err
		}
		if in.jf, err = rel(f.pc, f.jf); err != nil {
			return Program{}, err
		}
	}
	if len(a.insns) > maxInsns {
		return Program{}, fmt.Errorf("seccomp: program has %d instructions, more than %d", len(a.insns), maxInsns)
	}
	return Program{arch: arch, insns: a.insns, notes: a.notes}, nil
}
