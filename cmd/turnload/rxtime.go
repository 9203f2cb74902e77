package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// timestampReceives asks the kernel to stamp every datagram the socket
// receives with its arrival time (SO_TIMESTAMPNS, wall clock, nanoseconds),
// delivered as a control message with the datagram.
func timestampReceives(c *net.UDPConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("raw socket: %w", err)
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	})
	if err = errors.Join(err, serr); err != nil {
		return fmt.Errorf("enable receive timestamps: %w", err)
	}
	return nil
}

// Layout of a control message on 64-bit Linux: a cmsghdr (length as a
// uint64, level and type as int32) then the data, padded to 8 bytes.
const (
	cmsgHeader   = 16
	timespecSize = 16
)

// rxTimestamp finds SCM_TIMESTAMPNS among control messages and returns it
// as Unix nanoseconds (hot path: no allocation, unlike
// unix.ParseSocketControlMessage).
func rxTimestamp(oob []byte) (int64, bool) {
	for len(oob) >= cmsgHeader {
		n := int(binary.NativeEndian.Uint64(oob[0:8]))
		if n < cmsgHeader || n > len(oob) {
			return 0, false
		}
		level := int32(binary.NativeEndian.Uint32(oob[8:12]))
		typ := int32(binary.NativeEndian.Uint32(oob[12:16]))
		if level == unix.SOL_SOCKET && typ == unix.SCM_TIMESTAMPNS && n >= cmsgHeader+timespecSize {
			sec := int64(binary.NativeEndian.Uint64(oob[16:24]))
			nsec := int64(binary.NativeEndian.Uint64(oob[24:32]))
			return sec*1e9 + nsec, true
		}
		oob = oob[min(len(oob), (n+7)&^7):]
	}
	return 0, false
}
