package main

import (
	"image"
	"image/color"
	"strings"
)

// glyphs is a 5x7 bitmap font for the few characters a chart needs:
// upper-case letters, digits and some punctuation. Lower case is drawn as
// upper case. Each string is a row, '#' an inked pixel.
func glyphs() map[rune][7]string {
	return map[rune][7]string{
		'A': {" ### ", "#   #", "#   #", "#####", "#   #", "#   #", "#   #"},
		'B': {"#### ", "#   #", "#   #", "#### ", "#   #", "#   #", "#### "},
		'C': {" ### ", "#   #", "#    ", "#    ", "#    ", "#   #", " ### "},
		'D': {"#### ", "#   #", "#   #", "#   #", "#   #", "#   #", "#### "},
		'E': {"#####", "#    ", "#    ", "#### ", "#    ", "#    ", "#####"},
		'F': {"#####", "#    ", "#    ", "#### ", "#    ", "#    ", "#    "},
		'G': {" ### ", "#   #", "#    ", "# ###", "#   #", "#   #", " ####"},
		'H': {"#   #", "#   #", "#   #", "#####", "#   #", "#   #", "#   #"},
		'I': {" ### ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "},
		'J': {"  ###", "   # ", "   # ", "   # ", "   # ", "#  # ", " ##  "},
		'K': {"#   #", "#  # ", "# #  ", "##   ", "# #  ", "#  # ", "#   #"},
		'L': {"#    ", "#    ", "#    ", "#    ", "#    ", "#    ", "#####"},
		'M': {"#   #", "## ##", "# # #", "# # #", "#   #", "#   #", "#   #"},
		'N': {"#   #", "#   #", "##  #", "# # #", "#  ##", "#   #", "#   #"},
		'O': {" ### ", "#   #", "#   #", "#   #", "#   #", "#   #", " ### "},
		'P': {"#### ", "#   #", "#   #", "#### ", "#    ", "#    ", "#    "},
		'Q': {" ### ", "#   #", "#   #", "#   #", "# # #", "#  # ", " ## #"},
		'R': {"#### ", "#   #", "#   #", "#### ", "# #  ", "#  # ", "#   #"},
		'S': {" ####", "#    ", "#    ", " ### ", "    #", "    #", "#### "},
		'T': {"#####", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  "},
		'U': {"#   #", "#   #", "#   #", "#   #", "#   #", "#   #", " ### "},
		'V': {"#   #", "#   #", "#   #", "#   #", "#   #", " # # ", "  #  "},
		'W': {"#   #", "#   #", "#   #", "# # #", "# # #", "# # #", " # # "},
		'X': {"#   #", "#   #", " # # ", "  #  ", " # # ", "#   #", "#   #"},
		'Y': {"#   #", "#   #", " # # ", "  #  ", "  #  ", "  #  ", "  #  "},
		'Z': {"#####", "    #", "   # ", "  #  ", " #   ", "#    ", "#####"},
		'0': {" ### ", "#   #", "#  ##", "# # #", "##  #", "#   #", " ### "},
		'1': {"  #  ", " ##  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "},
		'2': {" ### ", "#   #", "    #", "   # ", "  #  ", " #   ", "#####"},
		'3': {"#####", "   # ", "  #  ", "   # ", "    #", "#   #", " ### "},
		'4': {"   # ", "  ## ", " # # ", "#  # ", "#####", "   # ", "   # "},
		'5': {"#####", "#    ", "#### ", "    #", "    #", "#   #", " ### "},
		'6': {"  ## ", " #   ", "#    ", "#### ", "#   #", "#   #", " ### "},
		'7': {"#####", "    #", "   # ", "  #  ", " #   ", " #   ", " #   "},
		'8': {" ### ", "#   #", "#   #", " ### ", "#   #", "#   #", " ### "},
		'9': {" ### ", "#   #", "#   #", " ####", "    #", "   # ", " ##  "},
		' ': {"     ", "     ", "     ", "     ", "     ", "     ", "     "},
		'.': {"     ", "     ", "     ", "     ", "     ", " ##  ", " ##  "},
		',': {"     ", "     ", "     ", "     ", " ##  ", "  #  ", " #   "},
		':': {"     ", " ##  ", " ##  ", "     ", " ##  ", " ##  ", "     "},
		'-': {"     ", "     ", "     ", "#####", "     ", "     ", "     "},
		'/': {"     ", "    #", "   # ", "  #  ", " #   ", "#    ", "     "},
		'(': {"   # ", "  #  ", " #   ", " #   ", " #   ", "  #  ", "   # "},
		')': {" #   ", "  #  ", "   # ", "   # ", "   # ", "  #  ", " #   "},
		'%': {"##   ", "##  #", "   # ", "  #  ", " #   ", "#  ##", "   ##"},
		'=': {"     ", "     ", "#####", "     ", "#####", "     ", "     "},
		'<': {"   # ", "  #  ", " #   ", "#    ", " #   ", "  #  ", "   # "},
		'>': {" #   ", "  #  ", "   # ", "    #", "   # ", "  #  ", " #   "},
		'x': {"     ", "     ", "#   #", " # # ", "  #  ", " # # ", "#   #"},
	}
}

// font draws text with glyphs at an integer scale.
type font struct {
	g     map[rune][7]string
	scale int
}

func newFont(scale int) *font { return &font{g: glyphs(), scale: scale} }

// advance is the width of one character cell, a column of space included.
func (f *font) advance() int { return 6 * f.scale }

// height is the height of a line of text.
func (f *font) height() int { return 7 * f.scale }

func (f *font) width(s string) int { return len([]rune(s)) * f.advance() }

// lookup maps a character to its glyph: lower case to upper case (except
// 'x', kept as the multiplication sign), unknown characters to '?'-less
// blanks so a missing glyph never panics.
func (f *font) lookup(r rune) [7]string {
	if g, ok := f.g[r]; ok {
		return g
	}
	if g, ok := f.g[[]rune(strings.ToUpper(string(r)))[0]]; ok {
		return g
	}
	return f.g[' ']
}

// draw writes s with its top-left corner at (x, y).
func (f *font) draw(img *image.RGBA, x, y int, s string, c color.Color) {
	for _, r := range s {
		g := f.lookup(r)
		for row, bits := range g {
			for col, b := range bits {
				if b != '#' {
					continue
				}
				for dy := range f.scale {
					for dx := range f.scale {
						img.Set(x+col*f.scale+dx, y+row*f.scale+dy, c)
					}
				}
			}
		}
		x += f.advance()
	}
}
