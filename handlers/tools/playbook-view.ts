// The structuredContent of show_playbook: the contract between the tool and the playbook view.
// Types only, with no imports, so the view (ui/playbook) can use them as they are.

export interface Phase {
  id: string
  name: string
  summary: string
  deliverables: string[]
  duration_weeks: { min: number; max: number }
}

export interface PlaybookStyle {
  name: string
  description: string
  palette: string[]
}

export interface Playbook {
  studio: { name: string; tagline: string }
  phases: Phase[]
  styles: PlaybookStyle[]
}

export interface PlaybookProject {
  id: string
  title: string
  designer: string
  city: string
  country: string
  year: number
  area_sqm: number
  image: { url: string; alt: string } | null
  page_url: string
}

export interface PlaybookView {
  studio: { name: string; tagline: string }
  phases: Phase[]
  styles: (PlaybookStyle & { projects: PlaybookProject[] })[]
  filter: { style: string | null; location: string | null }
}
