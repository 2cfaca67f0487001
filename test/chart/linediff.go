package chart

// hunk is a run of lines: common to both texts (a == b), or the lines of a and of b between two
// common runs (either may be empty).
type hunk struct {
	common bool
	a, b   []string
}

// diffLines splits two line sequences into hunks along a longest common subsequence, so that
// concatenating each hunk's a lines gives a and each hunk's b lines gives b. The inputs are a few
// hundred lines, one kind's objects, so the quadratic table is small.
func diffLines(a, b []string) []hunk {
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var hunks []hunk
	add := func(common bool, la, lb []string) {
		if n := len(hunks); n > 0 && hunks[n-1].common == common {
			hunks[n-1].a = append(hunks[n-1].a, la...)
			hunks[n-1].b = append(hunks[n-1].b, lb...)
			return
		}
		hunks = append(hunks, hunk{common: common, a: la, b: lb})
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			add(true, a[i:i+1:i+1], b[j:j+1:j+1])
			i, j = i+1, j+1
		case j == len(b) || (i < len(a) && lcs[i+1][j] >= lcs[i][j+1]):
			add(false, a[i:i+1:i+1], nil)
			i++
		default:
			add(false, nil, b[j:j+1:j+1])
			j++
		}
	}
	return hunks
}
