package qemu

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// QMP is a minimal QMP client: one command at a time, events skipped.
type QMP struct {
	conn net.Conn
	r    *bufio.Reader
}

// DialQMP connects and negotiates capabilities.
func DialQMP(path string) (*QMP, error) {
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return nil, err
	}
	q := &QMP{conn: c, r: bufio.NewReader(c)}
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := q.r.ReadBytes('\n'); err != nil { // greeting
		c.Close()
		return nil, err
	}
	if err := q.Do("qmp_capabilities", nil, nil); err != nil {
		c.Close()
		return nil, err
	}
	return q, nil
}

// Do runs cmd with args and decodes "return" into out (if not nil).
func (q *QMP) Do(cmd string, args any, out any) error {
	if err := q.conn.SetDeadline(time.Now().Add(15 * time.Second)); err != nil {
		return err
	}
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := q.conn.Write(append(b, '\n')); err != nil {
		return err
	}
	for {
		line, err := q.r.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("qmp %s: %w", cmd, err)
		}
		var resp struct {
			Event  string          `json:"event"`
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class, Desc string
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return fmt.Errorf("qmp %s: %w", cmd, err)
		}
		switch {
		case resp.Event != "":
			continue
		case resp.Error != nil:
			return fmt.Errorf("qmp %s: %s: %s", cmd, resp.Error.Class, resp.Error.Desc)
		}
		if out != nil && len(resp.Return) > 0 {
			return json.Unmarshal(resp.Return, out)
		}
		return nil
	}
}

// Close closes the QMP connection.
func (q *QMP) Close() { q.conn.Close() }
