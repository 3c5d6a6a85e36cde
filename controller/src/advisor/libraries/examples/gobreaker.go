// gobreaker's README example: a ratio ReadyToTrip (at least 3 requests, 60 % of them failed).
var st gobreaker.Settings
st.Name = "HTTP GET"
st.ReadyToTrip = func(counts gobreaker.Counts) bool {
	failureRatio := float64(counts.TotalFailures) / float64(counts.Requests)
	return counts.Requests >= 3 && failureRatio >= 0.6
}

cb = gobreaker.NewCircuitBreaker[[]byte](st)
