export const services = [
  {
    id: "initial-assessment",
    name: "Initial assessment",
    duration: 60,
    price: 75,
    summary:
      "A full assessment of your injury or pain, a clear diagnosis and a treatment plan, with hands-on treatment in the same session.",
  },
  {
    id: "follow-up",
    name: "Follow-up treatment",
    duration: 30,
    price: 50,
    summary: "Treatment and progression of your exercise plan for existing patients, with the same physio where possible.",
  },
  {
    id: "sports-massage",
    name: "Sports massage",
    duration: 45,
    price: 55,
    summary: "Deep tissue work for tight, overworked muscles, whether you're training for an event or sat at a desk all week.",
  },
  {
    id: "post-surgery-rehab",
    name: "Post-surgery rehab",
    duration: 45,
    price: 65,
    summary: "Structured rehabilitation after joint replacement, ligament reconstruction or fracture, in line with your surgeon's protocol.",
  },
  {
    id: "clinical-pilates",
    name: "Clinical Pilates (1:1)",
    duration: 55,
    price: 60,
    summary: "One-to-one, physio-led Pilates on the reformer to build core strength and control after injury or back pain.",
  },
  {
    id: "acupuncture",
    name: "Acupuncture",
    duration: 30,
    price: 45,
    summary: "Western medical acupuncture and dry needling for persistent muscle and joint pain, alongside your other treatment.",
  },
];

export function findService(id) {
  return services.find((service) => service.id === id);
}

export function formatDuration(minutes) {
  return `${minutes} min`;
}

export function formatPrice(pounds) {
  return `£${pounds}`;
}
