package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// modelsPage is the part of GET /agent_api/v1/models the table shows.
type modelsPage struct {
	Models []struct {
		Ref          string `json:"ref"`
		DisplayName  string `json:"display_name"`
		Capabilities struct {
			Tools           bool   `json:"tools"`
			Vision          bool   `json:"vision"`
			PDF             bool   `json:"pdf"`
			Reasoning       bool   `json:"reasoning"`
			ContextWindow   *int64 `json:"context_window"`
			MaxOutputTokens *int64 `json:"max_output_tokens"`
		} `json:"capabilities"`
		Pricing *struct {
			InputPerMTok  json.Number `json:"input_per_mtok"`
			OutputPerMTok json.Number `json:"output_per_mtok"`
			Currency      string      `json:"currency"`
		} `json:"pricing"`
	} `json:"models"`
	Total      int  `json:"total"`
	NextOffset *int `json:"next_offset"`
}

func newModels(e *env, g *globals) *cobra.Command {
	f := &clientFlags{}
	var query string
	var limit, offset int
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the models catalog of a running server (GET /agent_api/v1/models)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client(cmd, g, f)
			if err != nil {
				return err
			}
			raw, err := c.Models(cmd.Context(), query, limit, offset)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				_, err := e.stdout.Write(raw)
				return err
			}
			var page modelsPage
			if err := json.Unmarshal(raw, &page); err != nil {
				return fmt.Errorf("models: %w", err)
			}
			size := func(v *int64) string {
				if v == nil {
					return "-"
				}
				return strconv.FormatInt(*v, 10)
			}
			yes := func(b bool) string {
				if b {
					return "yes"
				}
				return "no"
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "REF\tDISPLAY NAME\tTOOLS\tVISION\tPDF\tREASONING\tCONTEXT\tMAX OUTPUT\tPRICE IN/OUT PER MTOK")
			for _, m := range page.Models {
				price := "-"
				if p := m.Pricing; p != nil {
					price = fmt.Sprintf("%s/%s %s", p.InputPerMTok, p.OutputPerMTok, p.Currency)
				}
				cp := m.Capabilities
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Ref, m.DisplayName, yes(cp.Tools), yes(cp.Vision), yes(cp.PDF),
					yes(cp.Reasoning), size(cp.ContextWindow), size(cp.MaxOutputTokens), price)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.NextOffset != nil {
				fmt.Fprintf(e.stdout, "%d of %d; the next page: --offset %d\n", len(page.Models), page.Total, *page.NextOffset)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&query, "query", "", "case-insensitive substring of ref, provider or display name")
	cmd.Flags().IntVar(&limit, "limit", 0, "page size, 1..100 (default 20)")
	cmd.Flags().IntVar(&offset, "offset", 0, "models to skip")
	return cmd
}
