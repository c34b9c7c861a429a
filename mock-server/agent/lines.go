package agent

// maxLine bounds one output line; longer runs are emitted in pieces.
const maxLine = 4 << 20

// lineSplitter turns a byte stream into lines: "\n", "\r" and "\r\n" each end
// a line, the terminator is stripped (a blank line is emitted as ""; the SSE
// layer sends it as "\n", execd's convention), and a trailing partial line is emitted by flush.
type lineSplitter struct {
	buf  []byte
	cr   bool
	emit func(string)
}

func (l *lineSplitter) write(p []byte) {
	for _, c := range p {
		if l.cr {
			l.cr = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\r':
			l.line()
			l.cr = true
		case '\n':
			l.line()
		default:
			l.buf = append(l.buf, c)
			if len(l.buf) >= maxLine {
				l.emit(string(l.buf))
				l.buf = l.buf[:0]
			}
		}
	}
}

func (l *lineSplitter) line() {
	l.emit(string(l.buf))
	l.buf = l.buf[:0]
}

// flush emits a trailing partial line, if any.
func (l *lineSplitter) flush() {
	if len(l.buf) > 0 {
		l.emit(string(l.buf))
		l.buf = l.buf[:0]
	}
}
